package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/lazyre"
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

// MaxDuration is the longest duration sbf accepts: a century is longer
// than any lease, and keeps now+duration far from time.Time's limits.
const MaxDuration = Duration(36500 * 24 * time.Hour)

// ParseDuration reads "30m", "12h", "7d", "1.5d" or a Go duration
// ("1h30m"). Negative, empty and oversized durations are errors.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("must be a non-empty duration (for example: 30m, 12h, 7d)")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("must not be negative (got %q)", clip(s))
	}
	invalid := fmt.Errorf("has invalid duration value %q (for example: 30m, 12h, 7d)", clip(s))
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(n) {
			return 0, invalid
		}
		if n*24 > MaxDuration.Std().Hours() {
			return 0, tooLong(fmt.Sprintf("%q", clip(s)))
		}
		return Duration(n * float64(24*time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		if h, ok := approxHours(s); ok && h > MaxDuration.Std().Hours() {
			return 0, tooLong(fmt.Sprintf("%q", clip(s)))
		}
		return 0, invalid
	}
	if Duration(v) > MaxDuration {
		return 0, tooLong(fmt.Sprintf("%q", clip(s)))
	}
	return Duration(v), nil
}

// DurationFromHours reads v1's numeric hour values.
func DurationFromHours(h float64) (Duration, error) {
	if h < 0 || math.IsNaN(h) {
		return 0, fmt.Errorf("must not be negative (got %v)", h)
	}
	if h > MaxDuration.Std().Hours() {
		return 0, tooLong(strconv.FormatFloat(h, 'g', -1, 64) + " hours")
	}
	return Duration(h * float64(time.Hour)), nil
}

func tooLong(what string) error {
	return fmt.Errorf("%s is longer than the longest duration sbf accepts (%s)", what, MaxDuration)
}

var durationPartRE = lazyre.New(`(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)`)

// approxHours sums a Go duration's parts as floats, so a value too long
// for time.Duration is still recognised (and reported) as a duration.
func approxHours(s string) (float64, bool) {
	perHour := map[string]float64{"ns": 3.6e12, "us": 3.6e9, "µs": 3.6e9, "ms": 3.6e6, "s": 3600, "m": 60, "h": 1}
	total, covered := 0.0, 0
	for _, m := range durationPartRE.FindAllStringSubmatch(strings.TrimPrefix(s, "+"), -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, false
		}
		total += n / perHour[m[2]]
		covered += len(m[0])
	}
	return total, covered > 0 && covered == len(strings.TrimPrefix(s, "+"))
}
