package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a size: bytes as a number, or with a unit (k, M, G, T
// for powers of 1000, KiB, MiB, GiB, TiB for powers of 1024; B optional):
// "2GiB", "500MB", "1073741824".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q: want a size such as 2GiB, 500MB or a number of bytes", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	mult := map[string]int64{"": 1, "B": 1,
		"k": 1e3, "K": 1e3, "kB": 1e3, "KB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (k, M, G, T, KiB, MiB, GiB, TiB)", s, unit)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n * mult, nil
}

// ByteSize is a size in a config file: a number of bytes, or a string
// ParseSize reads ("2GiB").
type ByteSize int64

// UnmarshalTOML reads a number of bytes or a size with a unit.
func (b *ByteSize) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("%d: a size is not negative", x)
		}
		*b = ByteSize(x)
	case string:
		n, err := ParseSize(x)
		if err != nil {
			return err
		}
		*b = ByteSize(n)
	default:
		return fmt.Errorf("want a size such as \"2GiB\" or a number of bytes, not %T", v)
	}
	return nil
}
