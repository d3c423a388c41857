package serve

import (
	"net/http"
	"testing"
)

// SpecChecked is specChecked for the package's external tests: every
// server they start answers through it.
func SpecChecked(t testing.TB, h http.Handler) http.Handler { return specChecked(t, h) }
