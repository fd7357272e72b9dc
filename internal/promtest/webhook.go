package promtest

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Webhook is an Alertmanager webhook receiver on 127.0.0.1 that keeps
// every notification, so that a test can count the pages a user got.
type Webhook struct {
	URL string

	mu            sync.Mutex
	notifications []Notification
}

// Notification is one webhook call: with the route of
// StartAlertmanagerNotifying, one alert that started firing or resolved.
type Notification struct {
	Received time.Time
	Status   string `json:"status"` // firing or resolved
	Alerts   []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
		Fingerprint string            `json:"fingerprint"`
	} `json:"alerts"`
}

// StartWebhook starts the receiver and stops it when the test ends.
func StartWebhook(t testing.TB) *Webhook {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("promtest: webhook: %v", err)
	}
	h := &Webhook{URL: "http://" + l.Addr().String() + "/"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.Received = time.Now()
		h.mu.Lock()
		h.notifications = append(h.notifications, n)
		h.mu.Unlock()
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

// Notifications returns the notifications received so far, oldest first.
func (h *Webhook) Notifications() []Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Notification(nil), h.notifications...)
}
