package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// printJSON writes v as one indented JSON object.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printf writes text output.
func (e *env) printf(format string, args ...any) {
	fmt.Fprintf(e.stdout, format, args...)
}

// bytesText renders a byte count for people.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// durationText rounds a duration for people.
func durationText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// plural counts a noun for text output: "1 file", "2 files", "0 files",
// "3 entries". The plural is made by English's regular rules (-s; -es after
// s, x, z, ch, sh; -ies after a consonant's y) unless given as many, for
// the nouns the rules get wrong and for phrases that end in something
// else ("segment holds", "segments hold").
func plural[N ~int | ~int32 | ~int64](n N, one string, many ...string) string {
	noun := one
	if n != 1 {
		if len(many) > 0 {
			noun = many[0]
		} else {
			noun = pluralOf(one)
		}
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun
}

// pluralOf is the regular plural of an English noun (or of a phrase's last
// word).
func pluralOf(noun string) string {
	switch {
	case noun == "":
		return noun
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "z"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case len(noun) >= 2 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// floatsText lists floats as text output prints them: "0.01, 0.05".
func floatsText(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = floatText(f, 64)
	}
	return strings.Join(parts, ", ")
}
