package wire

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// formatDecimal writes unscaled×10^-scale as Java's SingleValueParser does
// (and the spec's DecimalTypeValue says): BigDecimal.toPlainString at a
// scale of zero or more ("123.4500", "2"), BigDecimal.toString at a
// negative scale, whose exponent is the negated scale ("2E+20").
func formatDecimal(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if scale < 0 {
		// BigDecimal.toString: one digit, the rest as a fraction, and the
		// adjusted exponent.
		exp := len(digits) - 1 - scale
		mant := digits[:1]
		if len(digits) > 1 {
			mant += "." + digits[1:]
		}
		return fmt.Sprintf("%s%sE+%d", sign, mant, exp)
	}
	if scale == 0 {
		return sign + digits
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	cut := len(digits) - scale
	return sign + digits[:cut] + "." + digits[cut:]
}

// parseDecimal reads a decimal as java.math.BigDecimal's string constructor
// does (sign, digits with an optional point, optional exponent), returning
// the unscaled value and the scale the text has: Java checks that scale
// against the type's and does not round.
func parseDecimal(s string) (*big.Int, int, error) {
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToUpper(body), "E")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := whole + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return nil, 0, fmt.Errorf("%q is not a decimal", s)
	}
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expText); err != nil {
			return nil, 0, fmt.Errorf("%q is not a decimal: exponent: %w", s, err)
		}
	}
	unscaled, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, fmt.Errorf("%q is not a decimal", s)
	}
	if s[0] == '-' {
		unscaled.Neg(unscaled)
	}
	return unscaled, len(frac) - exp, nil
}

// canonicalDecimal is v as an iceberg.Decimal at t's scale. iceberg-go's
// manifests hand out iceberg.DecimalLiteral (at the column's scale);
// without the Avro logical type the raw bytes, which are the unscaled
// value in two's complement, big-endian (the spec's binary form).
func canonicalDecimal(t iceberg.DecimalType, v any) (any, error) {
	var unscaled *big.Int
	scale := t.Scale()
	switch d := v.(type) {
	case iceberg.Decimal:
		unscaled, scale = d.Val.BigInt(), d.Scale
	case []byte:
		unscaled = twosComplement(d)
	case *big.Rat:
		n := new(big.Rat).Mul(d, new(big.Rat).SetInt(pow10(t.Scale())))
		if !n.IsInt() {
			return nil, fmt.Errorf("%s is not a %s value: more digits than the scale", d.RatString(), t)
		}
		unscaled = n.Num()
	default:
		return nil, fmt.Errorf("a %T (%v) is not a %s value", v, v, t)
	}
	at, err := rescale(unscaled, scale, t.Scale())
	if err != nil {
		return nil, fmt.Errorf("%s value %s: %w", t, formatDecimal(unscaled, scale), err)
	}
	unscaled = at
	if unscaled.BitLen() > 127 {
		return nil, fmt.Errorf("%s value %s is beyond 128 bits", t, formatDecimal(unscaled, t.Scale()))
	}
	return iceberg.Decimal{Val: decimal128.FromBigInt(unscaled), Scale: t.Scale()}, nil
}

// rescale moves unscaled from scale from to scale to, refusing to drop
// digits: Java refuses a value whose scale is not the type's, and a value
// at a smaller scale is the same number at the type's.
func rescale(unscaled *big.Int, from, to int) (*big.Int, error) {
	switch {
	case from == to:
		return unscaled, nil
	case from < to:
		return new(big.Int).Mul(unscaled, pow10(to-from)), nil
	}
	q, r := new(big.Int).QuoRem(unscaled, pow10(from-to), new(big.Int))
	if r.Sign() != 0 {
		return nil, fmt.Errorf("scale %d does not fit scale %d", from, to)
	}
	return q, nil
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// twosComplement reads big-endian two's complement bytes.
func twosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}
