package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time written as "30m", "12h" or "7d" (or any Go
// duration such as "1h30m"). Zero means unset.
type Duration time.Duration

// Std returns the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String renders the shortest spelling ParseDuration reads back: "7d",
// "2h", "1h30m", "45s"; "" for zero.
func (d Duration) String() string {
	td := time.Duration(d)
	if td == 0 {
		return ""
	}
	if td >= 48*time.Hour && td%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(td/(24*time.Hour)), 10) + "d"
	}
	var b strings.Builder
	if td < 0 {
		b.WriteByte('-')
		td = -td
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := td / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			td -= n * u.unit
		}
	}
	if td > 0 {
		fmt.Fprintf(&b, "%dns", td)
	}
	return b.String()
}

// MarshalText writes the canonical spelling.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what ParseDuration accepts.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration reads "30m", "12h", "7d", "1.5d" or a Go duration
// ("1h30m"). Negative and empty durations are errors.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("must be a non-empty duration (for example: 30m, 12h, 7d)")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("must not be negative (got %q)", s)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, fmt.Errorf("has invalid duration value %q (for example: 30m, 12h, 7d)", s)
		}
		return Duration(n * float64(24*time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("has invalid duration value %q (for example: 30m, 12h, 7d)", s)
	}
	return Duration(v), nil
}
