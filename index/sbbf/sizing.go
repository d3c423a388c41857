package sbbf

import (
	"fmt"
	"math"
)

// FalsePositiveRate returns the probability that a filter of numBlocks
// blocks holding ndv distinct hashes answers "may contain" for a hash it does
// not hold.
//
// This is the SBBF's own math, not the classic Bloom formula: a probe lands
// in one block, which holds k of the ndv values with probability
// Binomial(ndv, 1/numBlocks); each of those set one bit in each 32-bit word,
// so the probe's bit in a word is set with probability 1-(31/32)^k and the
// probe passes all eight words with probability (1-(31/32)^k)^8. The uneven
// filling of blocks is what the classic formula misses and why filters sized
// by it (as Parquet writers do) run above their target rate.
func FalsePositiveRate(numBlocks int, ndv uint64) float64 {
	if ndv == 0 {
		return 0
	}
	if numBlocks <= 1 {
		return wordsAllSet(float64(ndv))
	}
	n := float64(ndv)
	p := 1 / float64(numBlocks)
	mean := n * p
	spread := 12*math.Sqrt(mean*(1-p)) + 16
	lo := math.Max(0, math.Floor(mean-spread))
	hi := math.Min(n, math.Ceil(mean+spread))
	// The binomial pmf at the mode from log-gamma once, then outward by the
	// ratio of neighbouring terms: a multiplication per term instead of
	// three log-gamma calls.
	mode := math.Floor(mean)
	lgN, _ := math.Lgamma(n + 1)
	lgK, _ := math.Lgamma(mode + 1)
	lgNK, _ := math.Lgamma(n - mode + 1)
	logP, logQ := math.Log(p), math.Log1p(-p)
	peak := math.Exp(lgN - lgK - lgNK + mode*logP + (n-mode)*logQ)
	odds := p / (1 - p)
	// unset is (31/32)^k, a bit's chance to stay clear after k values,
	// stepped along with k.
	const keep = 31.0 / 32
	unsetAtMode := math.Pow(keep, mode)
	sum := peak * eighth(1-unsetAtMode)
	pmf, unset := peak, unsetAtMode
	for k := mode; k < hi; k++ { // pmf(k+1) = pmf(k)·(n-k)/(k+1)·p/q
		pmf *= (n - k) / (k + 1) * odds
		unset *= keep
		sum += pmf * eighth(1-unset)
	}
	pmf, unset = peak, unsetAtMode
	for k := mode; k > lo; k-- { // pmf(k-1) = pmf(k)·k/(n-k+1)·q/p
		pmf *= k / (n - k + 1) / odds
		unset /= keep
		sum += pmf * eighth(1-unset)
	}
	return sum
}

// eighth returns x to the eighth power: the eight words of a block must all
// have the probe's bit set.
func eighth(x float64) float64 {
	x *= x
	x *= x
	return x * x
}

// wordsAllSet is the chance that a probe finds its bit set in all eight
// words of a block that holds k values.
func wordsAllSet(k float64) float64 {
	return eighth(-math.Expm1(k * math.Log1p(-1.0/32)))
}

// NumBlocks returns the smallest number of blocks whose false-positive rate
// for ndv distinct values is at most fpp, capped at maxBytes. Because the
// exact distinct count of a data file is known when its filter is built, the
// filter can be sized to any whole number of blocks instead of the power of
// two Parquet writers round to (which wastes up to half the bytes).
// A filter for no values gets one block, so readers never meet an empty
// bitset.
func NumBlocks(ndv uint64, fpp float64, maxBytes int) (int, error) {
	if !(fpp > 0 && fpp < 1) {
		return 0, fmt.Errorf("sbbf: false-positive rate %v is not in (0, 1)", fpp)
	}
	if maxBytes < BlockBytes {
		return 0, fmt.Errorf("sbbf: maximum size %d bytes is smaller than one %d-byte block", maxBytes, BlockBytes)
	}
	maxBlocks := maxBytes / BlockBytes
	if ndv == 0 {
		return 1, nil
	}
	// Start from the classic estimate and widen until the target is met;
	// the rate falls as blocks are added, so a binary search finds the least.
	guess := -8 * float64(ndv) / math.Log(1-math.Pow(fpp, 1.0/8)) / (8 * BlockBytes)
	hi := max(1, int(math.Ceil(guess)))
	for FalsePositiveRate(hi, ndv) > fpp {
		if hi >= maxBlocks {
			return maxBlocks, nil
		}
		hi = min(hi*2, maxBlocks)
	}
	lo := 0 // FalsePositiveRate(lo) > fpp or lo == 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if FalsePositiveRate(mid, ndv) <= fpp {
			hi = mid
		} else {
			lo = mid
		}
	}
	return min(hi, maxBlocks), nil
}
