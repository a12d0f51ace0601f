//go:build !race

package confine

const raceDetector = false
