package serve

import (
	"net/http"
	"testing"
	"time"
)

// SpecChecked is specChecked for the package's external tests: every
// server they start answers through it.
func SpecChecked(t testing.TB, h http.Handler) http.Handler { return specChecked(t, h) }

// ForgetReadiness drops the readiness probe's last answer, so that the next
// /readyz probes again rather than answer what it found within
// readinessTTL.
func (s *Server) ForgetReadiness() {
	s.probes.probing.Lock()
	s.probes.at = time.Time{}
	s.probes.probing.Unlock()
	s.readyMu.Lock()
	s.readyAt = time.Time{}
	s.readyMu.Unlock()
}
