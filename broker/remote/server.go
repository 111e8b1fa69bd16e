package remote

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"lakehouse/broker"
)

// Handler serves log's reads under the path it is mounted at (strip the
// prefix before it): GET /topics, /offsets?topic=, /meta?key= and
// /read?topic=&partition=&from=&max= (at most maxRead messages). It never
// writes to log. Authentication is the caller's (a wrapping handler).
func Handler(log broker.Log) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathTopics, func(w http.ResponseWriter, r *http.Request) {
		ts, err := log.Topics(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, ts)
	})
	mux.HandleFunc("GET "+pathOffsets, func(w http.ResponseWriter, r *http.Request) {
		offs, err := log.Offsets(r.Context(), r.URL.Query().Get("topic"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, offs)
	})
	mux.HandleFunc("GET "+pathMeta, func(w http.ResponseWriter, r *http.Request) {
		v, err := log.Meta(r.Context(), r.URL.Query().Get("key"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, struct {
			Value []byte `json:"value"`
			Set   bool   `json:"set"`
		}{v, v != nil})
	})
	mux.HandleFunc("GET "+pathRead, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		partition, err1 := strconv.Atoi(q.Get("partition"))
		from, err2 := strconv.ParseInt(q.Get("from"), 10, 64)
		max, err3 := strconv.Atoi(q.Get("max"))
		if err := errors.Join(err1, err2, err3); err != nil || max < 0 {
			writeStatus(w, http.StatusBadRequest, "bad_request", "want topic, partition, from and max (>= 0) as integers")
			return
		}
		if max == 0 || max > maxRead {
			max = maxRead
		}
		msgs, err := log.Read(r.Context(), q.Get("topic"), partition, from, max)
		if err != nil {
			writeError(w, err)
			return
		}
		var buf []byte
		for _, m := range msgs {
			buf = appendMessage(buf, m)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
		_, _ = w.Write(buf)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			writeStatus(w, c.status, c.code, err.Error())
			return
		}
	}
	writeStatus(w, http.StatusInternalServerError, "internal", err.Error())
}

func writeStatus(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Code: code, Message: msg})
}
