package bench

import (
	"fmt"
	"time"

	"lakehouse/internal/humanize"
)

// The disk target of a small VM (issue 44): with the default settings, a
// file system of TargetDiskFS bytes holds the appliance at the real
// stream's rate for at least TargetDiskDays before the disk reserve stops
// ingest.
const (
	TargetDiskFS   = 30e9
	TargetDiskDays = 30.0
	// RealEventsPerDay is the real stream's density (about 35 events/s).
	RealEventsPerDay = 3_000_000
)

// DiskPlan is what the projection assumes of a service with the default
// settings; package main fills it from run's defaults.
type DiskPlan struct {
	FSBytes     int64         `json:"fs_bytes"`      // the file system projected for
	RealPerDay  int           `json:"real_per_day"`  // the real stream's events a day
	BrokerShare float64       `json:"broker_share"`  // --retention-bytes' default, as a share of the file system
	BrokerAge   time.Duration `json:"broker_age_ns"` // --retention
	Reserve     int64         `json:"reserve_bytes"` // --disk-reserve
}

// DiskProjection is how long a file system lasts: the longest lake's disk
// per day of history, scaled from its density to the real stream's, with
// the broker growing until retention caps it (by size or by age, whichever
// is smaller) and everything else growing for good.
type DiskProjection struct {
	Plan         DiskPlan `json:"plan"`
	FromDays     float64  `json:"from_days"` // the lake the figures come from
	Scale        float64  `json:"scale"`     // real events a day / the lake's
	BrokerPerDay float64  `json:"broker_per_day_bytes"`
	OtherPerDay  float64  `json:"other_per_day_bytes"` // warehouse, checkpoints, catalog
	BrokerCap    float64  `json:"broker_cap_bytes"`
	Days         float64  `json:"days"` // until free space falls to the reserve
}

// projectDisk computes the projection from a lake of days of history at
// perDay events a day.
func projectDisk(d DiskUsage, days float64, perDay int, plan DiskPlan) DiskProjection {
	p := DiskProjection{Plan: plan, FromDays: days, Scale: float64(plan.RealPerDay) / float64(perDay)}
	broker := float64(d.Bytes("broker.db"))
	p.BrokerPerDay = broker / days * p.Scale
	p.OtherPerDay = (float64(d.Total-d.AwaitingExpiry) - broker) / days * p.Scale
	p.BrokerCap = plan.BrokerShare * float64(plan.FSBytes)
	if plan.BrokerAge > 0 {
		p.BrokerCap = min(p.BrokerCap, p.BrokerPerDay*plan.BrokerAge.Hours()/24)
	}
	free := float64(plan.FSBytes - plan.Reserve)
	switch {
	case p.BrokerPerDay+p.OtherPerDay <= 0:
		p.Days = -1
	case p.BrokerPerDay <= 0 || (p.BrokerPerDay+p.OtherPerDay)*p.BrokerCap/p.BrokerPerDay >= free:
		// Full before the broker reaches its cap.
		p.Days = free / (p.BrokerPerDay + p.OtherPerDay)
	case p.OtherPerDay <= 0:
		p.Days = -1 // never full
	default:
		p.Days = (free - p.BrokerCap) / p.OtherPerDay
	}
	return p
}

// diskVerdict is the disk target's line.
func diskVerdict(p DiskProjection) TargetVerdict {
	v := TargetVerdict{Target: fmt.Sprintf("at least %g days on a %.0f GB file system at the real rate (%s events a day), default settings",
		TargetDiskDays, TargetDiskFS/1e9, humanize.Count(int64(p.Plan.RealPerDay)))}
	if p.Days < 0 {
		v.Value, v.Met = "never full", true
		return v
	}
	v.Value = fmt.Sprintf("%.1f days (broker capped at %s, the rest growing %s a day, projected from %g days)",
		p.Days, fmtBytes(int64(p.BrokerCap)), fmtBytes(int64(p.OtherPerDay)), p.FromDays)
	v.Met = p.Days >= TargetDiskDays
	return v
}
