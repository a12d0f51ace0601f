package cli

import (
	"bytes"
	"strings"
	"testing"
)

// A backend's own command (vz's VM supervisor) is a hidden subcommand of
// sbf: the command line counts its arguments and leaves its signals to it.
func TestBackendCommandsAreHiddenSubcommands(t *testing.T) {
	cmd, _, err := (&app{}).rootCommand().Find([]string{"vz-run"})
	if err != nil || cmd.Name() != "vz-run" || !cmd.Hidden || !handlesSignals(cmd) {
		t.Fatalf("vz-run: %v %+v", err, cmd)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"vz-run"}, func(string) string { return "" }, nil, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "usage: sbf vz-run INSTANCE_DIR") {
		t.Errorf("sbf vz-run with no folder: exit %d, %s", code, stderr.String())
	}
}
