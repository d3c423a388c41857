package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrNaN says a NaN literal was to be written in an expression: Java's
// Expressions refuse NaN literals (is-nan is the predicate), so no client
// reads one back.
var ErrNaN = errors.New("a NaN literal has no form in a REST expression (is-nan is the predicate)")

// nanText is what the encoder writes for a NaN value (a partition value of
// a float or double identity partition, a bound): the JSON string "NaN",
// as Java's own writer does (Jackson quotes non-numeric numbers). Neither
// Java's SingleValueParser nor iceberg-go's client reads it back (both want
// a finite JSON number), so a client planning a table with a NaN partition
// through serve fails on that task, as through Java's own server; but
// failing the whole plan here would also fail the clients that read it, and
// other files' tasks.
const nanText = "NaN"

// infinity is what the encoder writes for ±Inf. Jackson writes infinities as
// the strings "Infinity" and "-Infinity", which Java's reader refuses like
// "NaN"; but it reads any floating-point token, and Double.parseDouble
// rounds one beyond the double range to Infinity, so 1.0E309 is the JSON
// that Java reads as +Inf (for float too: (float) Infinity). iceberg-go's
// client refuses infinite partition values and literals whatever the form.
const infinity = "1.0E309"

// formatFloat writes f, a number other than NaN, as Java's Double.toString
// / Float.toString do (bits 64 or 32): shortest digits that read back to f,
// plain notation for 1e-3 <= |f| < 1e7 and d.dddE±n otherwise, always with a
// fraction or exponent, so the token is a JSON floating-point number:
// Java's SingleValueParser refuses an integral token such as 2 for a
// double. -0 stays -0.0 (Java writes and reads it so).
func formatFloat(f float64, bits int) (string, error) {
	switch {
	case math.IsInf(f, 1):
		return infinity, nil
	case math.IsInf(f, -1):
		return "-" + infinity, nil
	}
	abs := math.Abs(f)
	if abs == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.ContainsRune(s, '.') {
			s += ".0"
		}
		return s, nil
	}
	// strconv's 'e' form is 1.5e+07 / 1e-05; Java's is 1.5E7 / 1.0E-5.
	// Java writes at least two digits, the two closest to f when one
	// would do (Double.MIN_VALUE is 4.9E-324, not 5.0E-324).
	s := strconv.FormatFloat(f, 'e', -1, bits)
	if !strings.ContainsRune(s, '.') {
		s = strconv.FormatFloat(f, 'e', 1, bits)
	}
	mant, exp, _ := strings.Cut(s, "e")
	n, err := strconv.Atoi(exp)
	if err != nil {
		return "", fmt.Errorf("format %v: %w", f, err)
	}
	return mant + "E" + strconv.Itoa(n), nil
}

// parseFloat reads a JSON floating-point token as Java does: a token with a
// fraction or an exponent (Jackson's VALUE_NUMBER_FLOAT), rounded to a
// double and then, for bits 32, to a float; beyond the range it is ±Inf.
func parseFloat(tok string, bits int) (float64, error) {
	if !isNumber(tok) || !strings.ContainsAny(tok, ".eE") {
		return 0, fmt.Errorf("%s is not a JSON floating-point number", tok)
	}
	f, err := strconv.ParseFloat(tok, 64)
	var numErr *strconv.NumError
	if err != nil && !(errors.As(err, &numErr) && numErr.Err == strconv.ErrRange) {
		return 0, fmt.Errorf("%s: %w", tok, err)
	}
	if bits == 32 {
		f = float64(float32(f))
	}
	return f, nil
}

// parseInteger reads a JSON integer token in the range of bits, as Java's
// isIntegralNumber and canConvertToInt/Long do.
func parseInteger(tok string, bits int) (int64, error) {
	if !isNumber(tok) || strings.ContainsAny(tok, ".eE") {
		return 0, fmt.Errorf("%s is not a JSON integer", tok)
	}
	n, err := strconv.ParseInt(tok, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s is not an int%d: %w", tok, bits, err)
	}
	return n, nil
}

// isNumber says whether tok starts as a JSON number does (the JSON decoder
// has checked the rest of its syntax).
func isNumber(tok string) bool {
	return tok != "" && (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9'))
}
