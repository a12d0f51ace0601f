//go:build !race

package composefile

const raceDetector = false
