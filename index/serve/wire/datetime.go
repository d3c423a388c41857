package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// Dates, times and timestamps are written in the spec's fixed-width forms:
// times and timestamps with all six (nanosecond types: nine) fraction digits,
// timestamptz with the offset +00:00. Java's own writer trims trailing zeros
// (ISO_LOCAL_TIME), but its reader (ISO parsers) takes any fraction width,
// and iceberg-go's reader does too, so the spec's form is the one to write.

// isoYear writes a year as java.time's ISO formatters do: four digits,
// a '+' before a year over 9999 and a '-' before a negative one, so a date
// outside 0000..9999 still reads back in Java. (iceberg-go's reader,
// time.Parse with 2006-01-02, reads no such year in any form.)
func isoYear(y int) string {
	switch {
	case y > 9999:
		return "+" + strconv.Itoa(y)
	case y < 0:
		return fmt.Sprintf("-%04d", -y)
	default:
		return fmt.Sprintf("%04d", y)
	}
}

func isoDate(t time.Time) string {
	return fmt.Sprintf("%s-%02d-%02d", isoYear(t.Year()), t.Month(), t.Day())
}

// formatDate is a date (days from 1970-01-01) as YYYY-MM-DD.
func formatDate(d iceberg.Date) string {
	return isoDate(time.Unix(int64(d)*86400, 0).UTC())
}

// formatTime is a time of day (microseconds from midnight) as
// HH:MM:SS.ffffff.
func formatTime(t iceberg.Time) string {
	us := int64(t)
	return fmt.Sprintf("%02d:%02d:%02d.%06d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000)
}

// formatTimestamp is an instant (digits fraction digits of a second) as
// YYYY-MM-DDTHH:MM:SS.f…, with +00:00 when utc (timestamptz).
func formatTimestamp(t time.Time, digits int, utc bool) string {
	frac := t.Nanosecond()
	if digits == 6 {
		frac /= 1000
	}
	s := fmt.Sprintf("%sT%02d:%02d:%02d.%0*d", isoDate(t), t.Hour(), t.Minute(), t.Second(), digits, frac)
	if utc {
		s += "+00:00"
	}
	return s
}

// splitYear takes the year off an ISO date as isoYear writes it, returning
// the year and the rest ("-MM-DD…"), since time.Parse reads only four-digit
// years. As java.time, it wants a sign before a year of more than four
// digits ('+' or '-') and takes '-' before any negative year.
func splitYear(s string) (int, string, error) {
	sign, body := 1, s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		if body[0] == '-' {
			sign = -1
		}
		body = body[1:]
	}
	i := strings.IndexByte(body, '-')
	signed := len(body) < len(s)
	if i < 4 || (i > 4 && !signed) || (i == 4 && s[0] == '+') {
		return 0, "", fmt.Errorf("%q is not an ISO date", s)
	}
	y, err := strconv.Atoi(body[:i])
	if err != nil || strings.Trim(body[:i], "0123456789") != "" {
		return 0, "", fmt.Errorf("%q is not an ISO date", s)
	}
	return sign * y, body[i:], nil
}

// parseISODate reads YYYY-MM-DD, as Java's ISO_LOCAL_DATE does.
func parseISODate(s string) (time.Time, error) {
	y, rest, err := splitYear(s)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse("-01-02", rest)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an ISO date: %w", s, err)
	}
	return time.Date(y, t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
}

// parseISOTime reads HH:MM[:SS[.f…]] into nanoseconds from midnight, as
// Java's ISO_LOCAL_TIME does.
func parseISOTime(s string) (int64, error) {
	layout := "15:04"
	if len(s) > 5 {
		layout = "15:04:05"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an ISO time: %w", s, err)
	}
	return int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) +
		int64(t.Second())*int64(time.Second) + int64(t.Nanosecond()), nil
}

// parseISOTimestamp reads YYYY-MM-DDTHH:MM[:SS[.f…]] with an offset when
// utc, as Java's ISO parsers do. Java reads a timestamptz only with the
// offset +00:00 (its isUTCTimestamptz; "Z" is +00:00 there too).
func parseISOTimestamp(s string, utc bool) (time.Time, error) {
	i := strings.IndexByte(s, 'T')
	if i < 0 {
		return time.Time{}, fmt.Errorf("%q is not an ISO timestamp: no T", s)
	}
	date, clock := s[:i], s[i+1:]
	if utc {
		switch {
		case strings.HasSuffix(clock, "Z"):
			clock = strings.TrimSuffix(clock, "Z")
		case strings.HasSuffix(clock, "+00:00"):
			clock = strings.TrimSuffix(clock, "+00:00")
		default:
			return time.Time{}, fmt.Errorf("%q: a timestamptz must have the offset +00:00", s)
		}
	}
	d, err := parseISODate(date)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an ISO timestamp: %w", s, err)
	}
	ns, err := parseISOTime(clock)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an ISO timestamp: %w", s, err)
	}
	return d.Add(time.Duration(ns)), nil
}
