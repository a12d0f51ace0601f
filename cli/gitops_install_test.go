package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// The gitops workflow on a runner without sbf: its install step fetches the
// pinned release from a local folder standing in for the release page,
// checks it, and the jobs run the sbf it installed. A tampered archive, or
// a SHA256SUMS that is not the pinned one, fails the job before sbf runs.
func TestGitopsInstallsPinnedRelease(t *testing.T) {
	t.Parallel()             // subprocesses and waits: it overlaps with the others
	testutil.CoverSources(t) // it runs sbf without a helper that does
	if runtime.GOOS != "linux" {
		t.Skip("the install script's archive here is a linux one")
	}
	if p, err := exec.LookPath("sbf"); err == nil {
		t.Skipf("sbf is on PATH (%s): the install step would not run", p)
	}
	wf := loadWorkflow(t, examplesDir+"/gitops/.github/workflows/sandboxes.yml")
	// Until a release exists the example says "latest"; either way the
	// release folder stands in for the page, and its archive has a version.
	version := strings.TrimPrefix(wf.Env["SBF_VERSION"], "v")
	if version == "latest" {
		version = "1.2.3"
	}
	release := t.TempDir()
	archive := "sbf_" + version + "_linux_" + runtime.GOARCH + ".tar.gz"
	data := tarGz(t, map[string]string{"sbf": sbfBinary, ServerBinary: serverBinary})
	write(t, filepath.Join(release, archive), string(data))
	sums := hexSum(data) + "  " + archive + "\n"
	write(t, filepath.Join(release, "SHA256SUMS"), sums)
	wf.Env["SBF_DOWNLOAD_URL"] = "file://" + release

	r := &runner{t: t, wf: wf, dir: copyExample(t, "gitops"), env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SBF_STATE_HOME=" + t.TempDir(),
	}}
	push := event{"push", "refs/heads/main", nil}
	expectJobs(t, "installed from the release", r.run(push), "validate ok")

	wf.Env["SBF_SUMS_SHA256"] = hexSum([]byte(sums))
	expectJobs(t, "SHA256SUMS pinned", r.run(push), "validate ok")
	wf.Env["SBF_SUMS_SHA256"] = hexSum([]byte("another release"))
	expectJobs(t, "SHA256SUMS not the pinned one", r.run(push), "validate exit 1")

	wf.Env["SBF_SUMS_SHA256"] = ""
	write(t, filepath.Join(release, archive), string(data)+"tampered")
	expectJobs(t, "archive tampered with", r.run(push), "validate exit 1")
}

// The workflow's install script is sbf's own, copied beside it so the
// example can be copied whole.
func TestGitopsInstallScriptIsSbfs(t *testing.T) {
	example, err1 := os.ReadFile(examplesDir + "/gitops/.github/install-sbf.sh")
	ours, err2 := os.ReadFile("../scripts/install.sh")
	if err1 != nil || err2 != nil || !bytes.Equal(example, ours) {
		t.Errorf("examples/gitops/.github/install-sbf.sh is not scripts/install.sh (%v, %v): copy it again", err1, err2)
	}
}

// tarGz is a release archive of the named files (name → path).
func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression) // two test binaries: stored, not compressed
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body, err := os.ReadFile(files[name])
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
