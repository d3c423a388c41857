package catalog

import (
	"slices"
	"strings"
	"testing"
)

func TestParseIdentifier(t *testing.T) {
	valid := map[string][]string{
		"db.events":      {"db", "events"},
		"a.b.events":     {"a", "b", "events"},
		"my db.my table": {"my db", "my table"},
	}
	for s, want := range valid {
		got, err := ParseIdentifier(s)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseIdentifier(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{"", "events", ".events", "db.", "a..events", "."} {
		_, err := ParseIdentifier(s)
		if err == nil || !strings.Contains(err.Error(), `"`+s+`"`) {
			t.Errorf("ParseIdentifier(%q) = %v, want an error naming it", s, err)
		}
	}
}
