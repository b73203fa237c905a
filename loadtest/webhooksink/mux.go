package webhooksink

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Mux serves the sink for a separate process (loadtest/cmd/webhooksink): GET /_ledger answers
// the Ledger as JSON, POST /_fail?n=N makes the next N webhook requests answer 500, and every
// other POST is a webhook request.
func (s *Sink) Mux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_ledger", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Ledger())
	})
	mux.HandleFunc("POST /_fail", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			http.Error(w, "n must be a count", http.StatusBadRequest)
			return
		}
		s.FailNext(n)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("POST /", s)
	return mux
}
