package appliance

import (
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// notifier speaks systemd's notify protocol (Type=notify): READY=1 once
// start-up recovery is done, WATCHDOG=1 while the pipeline progresses (see
// runHealth), STOPPING=1 when shutdown begins. Outside systemd
// (NOTIFY_SOCKET unset) every call does nothing.
type notifier struct{ log *slog.Logger }

func (n notifier) send(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Warn("systemd notify failed", "state", state, "err", err)
	}
}

func (n notifier) ready()    { n.send(daemon.SdNotifyReady) }
func (n notifier) watchdog() { n.send(daemon.SdNotifyWatchdog) }
func (n notifier) stopping() { n.send(daemon.SdNotifyStopping) }
