// Package checksum computes a simple checksum of a byte slice.
package checksum

// Adler32 returns the Adler-32 checksum of data.
func Adler32(data []byte) uint32 {
	const mod = 65521
	a, b := uint32(1), uint32(0)
	for _, c := range data {
		a = (a + uint32(c)) % mod
		b = (b + a) % mod
	}
	return b<<16 | a
}
