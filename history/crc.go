package history

import (
	"hash/crc32"
	"sync"
)

// Journal records are checksummed with CRC-32C (Castagnoli). The hash/crc32
// package computes it with SSE4.2, but the first use of its Castagnoli
// table builds 8 KiB of tables by checksumming about 1.5 MB, about 0.2 ms:
// more than a one-shot call's whole record costs to write. A record below
// crcSmall bytes is checksummed with a plain 1 KiB table instead (a few
// microseconds to build); larger ones use the package. Both give the same
// CRC-32C, so the record format does not depend on the path taken.

// crcSmall is the record size from which hash/crc32 is worth its set-up.
const crcSmall = 32 << 10

// castagnoliPoly is crc32.Castagnoli; the package's MakeTable builds its
// SSE4.2 tables for that exact value, so the plain table is built here.
const castagnoliPoly = 0x82f63b78

var smallCRCTable = sync.OnceValue(func() *[256]uint32 {
	var t [256]uint32
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ castagnoliPoly
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return &t
})

var castagnoliTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// recordCRC returns the CRC-32C of the concatenated chunks (size bytes in
// all).
func recordCRC(chunks [][]byte, size int) uint32 {
	crc := uint32(0)
	if size >= crcSmall {
		tab := castagnoliTable()
		for _, c := range chunks {
			crc = crc32.Update(crc, tab, c)
		}
		return crc
	}
	t := smallCRCTable()
	crc = ^crc
	for _, c := range chunks {
		for _, b := range c {
			crc = t[byte(crc)^b] ^ crc>>8
		}
	}
	return ^crc
}
