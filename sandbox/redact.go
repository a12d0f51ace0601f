package sandbox

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/spec"
)

// defaultRootPassword is v1's published default for [infra.mysql]
// root_password: it hides nothing, and "root" is in too many paths to
// blank out.
const defaultRootPassword = "root"

// Redactor replaces a workspace's secrets in text sbf quotes (the
// history): the MySQL root password (its ${VAR}s read as the services
// read them), extra_env values whose names look secret, and the password
// of any URL (scheme://user:password@). Values shorter than 3 bytes are
// left: they would blank out too much to hide anything.
func Redactor(r *spec.Resolved, getenv func(string) string) func(string) string {
	swap := map[string]string{} // secret → what is shown instead
	if r != nil {
		infra := r.Config.Infra
		if pw := infra.MySQL.RootPassword; pw.Reveal() != defaultRootPassword {
			if pw.String() != pw.Reveal() { // a value, not ${VAR} references (shown as written)
				swap[pw.Reveal()] = spec.Redacted
			}
			if getenv != nil {
				if v, err := guest.Expand(pw.Reveal(), "root_password", getenv); err == nil && v != defaultRootPassword {
					swap[v] = spec.Redacted
				}
			}
		}
		for _, env := range []spec.Env{infra.MySQL.ExtraEnv, infra.Redis.ExtraEnv} {
			for _, v := range env {
				if v.String() != v.Reveal() {
					swap[v.Reveal()] = v.String()
				}
			}
		}
	}
	secrets := slices.SortedFunc(maps.Keys(swap), func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return func(s string) string {
		for _, secret := range secrets {
			if len(secret) >= 3 {
				s = strings.ReplaceAll(s, secret, swap[secret])
			}
		}
		// extra_env shows a URL's password masked; so does the history, anywhere.
		return spec.NewEnv(map[string]string{"url": s})["url"].String()
	}
}
