package history

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// The plain table and hash/crc32 must give the same CRC-32C at every size,
// across chunk boundaries and on both sides of crcSmall, or records written
// by one path would be set aside as damaged when folded.
func TestRecordCRCIsCRC32C(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, 7, 8, 9, 63, 64, 100, 4095, 4096, crcSmall - 1, crcSmall, crcSmall + 1, 3*crcSmall + 17}
	for _, n := range sizes {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		want := crc32.Checksum(data, tab)
		if got := recordCRC([][]byte{data}, n); got != want {
			t.Errorf("%d bytes in one chunk: CRC %08x, want %08x", n, got, want)
		}
		// The same bytes cut into uneven chunks.
		var chunks [][]byte
		for rest := data; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(5000))
			chunks = append(chunks, rest[:k])
			rest = rest[k:]
		}
		chunks = append(chunks, nil)
		if got := recordCRC(chunks, n); got != want {
			t.Errorf("%d bytes in %d chunks: CRC %08x, want %08x", n, len(chunks), got, want)
		}
	}
	// The check value of CRC-32C (RFC 3720, B.4 uses the same polynomial).
	if got := recordCRC([][]byte{[]byte("123456789")}, 9); got != 0xe3069283 {
		t.Errorf(`CRC-32C("123456789") = %08x, want e3069283`, got)
	}
}
