// Package sampledoc makes the large JSON answer the benchmarks and the
// benchmark peer share, so that every figure about "the 10 MB answer" is
// about the same bytes.
package sampledoc

import "strconv"

// Answer builds a JSON array of small objects of about size bytes
// (numbers, booleans, nulls, short strings, a few escapes and a non-ASCII
// letter), the same every run (a fixed linear congruential generator):
// the shape of the 10 MB answer issue 23's benchmarks print.
func Answer(size int) []byte {
	words := []string{"alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
	states := []string{"alive", "degraded", "starting", "stopped"}
	x := uint64(0x2545F4914F6CDD1D)
	next := func() uint64 {
		x = x*6364136223846793005 + 1442695040888963407
		return x >> 33
	}
	b := make([]byte, 0, size+256)
	b = append(b, '[')
	for i := 0; len(b) < size; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"name":"`...)
		b = append(b, words[next()%uint64(len(words))]...)
		b = append(b, '-')
		b = strconv.AppendUint(b, next()%100000, 10)
		b = append(b, `","ok":`...)
		b = strconv.AppendBool(b, next()%3 != 0)
		b = append(b, `,"load":`...)
		b = strconv.AppendFloat(b, float64(next()%100000)/1000, 'f', -1, 64)
		b = append(b, `,"delta":`...)
		b = strconv.AppendInt(b, int64(next()%2001)-1000, 10)
		b = append(b, `,"parent":`...)
		if next()%4 == 0 {
			b = strconv.AppendInt(b, int64(next()%uint64(i+1)), 10)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"state":"`...)
		b = append(b, states[next()%uint64(len(states))]...)
		b = append(b, `","tags":[`...)
		for t := range int(next() % 4) {
			if t > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, words[next()%uint64(len(words))]...)
			b = append(b, '"')
		}
		b = append(b, `],"note":`...)
		if next()%5 == 0 {
			b = append(b, `"said \"hi\"\tat start"`...)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
