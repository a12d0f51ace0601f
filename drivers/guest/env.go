package guest

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/sandboxforge/sbf/spec"
)

// Names derive from the v1 keys: prefix-sandbox, made safe for Docker.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func sanitize(s string) string {
	s = strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-_")
	if s == "" {
		return "default"
	}
	return s
}

// NetworkName is the Docker network a sandbox's services and app share.
func NetworkName(infra spec.Infra, sandbox string) string {
	if infra.NetworkName != "" {
		return infra.NetworkName
	}
	return sanitize(infra.NetworkNamePrefix + "-" + sandbox)
}

// MySQLContainer and RedisContainer name a sandbox's service containers.
func MySQLContainer(infra spec.Infra, sandbox string) string {
	return sanitize(infra.MySQL.ContainerNamePrefix + "-" + sandbox)
}

func RedisContainer(infra spec.Infra, sandbox string) string {
	return sanitize(infra.Redis.ContainerNamePrefix + "-" + sandbox)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces ${VAR} with the host's value, so secrets stay out of
// committed files. An unset variable is an error naming it.
func Expand(value, key string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(value, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s refers to ${%s}, which is not set in sbf's environment", key, strings.Join(missing, "}, ${"))
	}
	return out, nil
}

// ConnectionEnv is what the app needs to reach the sandbox's services.
func ConnectionEnv(infra spec.Infra, sandbox string, services []string, getenv func(string) string) (map[string]string, error) {
	env := map[string]string{}
	for _, svc := range services {
		switch svc {
		case "mysql":
			pw, err := Expand(infra.MySQL.RootPassword.Reveal(), "infra.mysql.root_password", getenv)
			if err != nil {
				return nil, err
			}
			host, db := MySQLContainer(infra, sandbox), infra.MySQL.Database
			for _, prefix := range []string{"DB_", "MYSQL_"} {
				env[prefix+"HOST"], env[prefix+"PORT"], env[prefix+"USER"], env[prefix+"PASSWORD"] = host, "3306", "root", pw
			}
			env["DB_NAME"], env["MYSQL_DATABASE"] = db, db
			env["DATABASE_URL"] = (&url.URL{Scheme: "mysql", User: url.UserPassword("root", pw), Host: host + ":3306", Path: "/" + db}).String()
		case "redis":
			host := RedisContainer(infra, sandbox)
			env["REDIS_HOST"], env["REDIS_PORT"], env["REDIS_URL"] = host, "6379", "redis://"+host+":6379/0"
		}
	}
	return env, nil
}

// Redacted replaces secret values for output, plans and state.
func Redacted(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		switch {
		case strings.Contains(k, "PASSWORD"):
			v = "[redacted]"
		case k == "DATABASE_URL":
			if u, err := url.Parse(v); err == nil && u.User != nil {
				u.User = url.UserPassword(u.User.Username(), "redacted")
				v = u.String()
			}
		}
		out[k] = v
	}
	return out
}

var envLine = regexp.MustCompile(`^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.]*)\s*=`)

// UpsertEnv sets each variable in a .env document: a line assigning the
// key is replaced in place (keeping an `export ` prefix), every other line
// stays byte for byte, new keys are appended in sorted order, and the
// result ends with exactly one newline.
func UpsertEnv(doc []byte, vars map[string]string) []byte {
	var out bytes.Buffer
	seen := map[string]bool{}
	body := bytes.TrimRight(doc, "\n")
	if len(body) > 0 {
		for _, line := range bytes.Split(body, []byte("\n")) {
			m := envLine.FindSubmatch(line)
			if m != nil {
				if v, ok := vars[string(m[2])]; ok {
					seen[string(m[2])] = true
					cr := ""
					if bytes.HasSuffix(line, []byte("\r")) {
						cr = "\r"
					}
					out.Write(m[1])
					out.WriteString(string(m[2]) + "=" + quoteEnv(v) + cr + "\n")
					continue
				}
			}
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.WriteString(k + "=" + quoteEnv(vars[k]) + "\n")
	}
	return out.Bytes()
}

// quoteEnv double-quotes values a .env reader would otherwise split or
// interpret.
func quoteEnv(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'#$\\`\n\r=") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}

// WriteEnvFile upserts vars into path (created 0600 when missing) and
// replaces it atomically. It reports whether the file changed.
func WriteEnvFile(path string, vars map[string]string, write func(string, []byte, os.FileMode) error) (bool, error) {
	old, err := os.ReadFile(path)
	perm := os.FileMode(0o600)
	if err == nil {
		if info, serr := os.Stat(path); serr == nil {
			perm = info.Mode().Perm()
		}
	} else if !os.IsNotExist(err) {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	next := UpsertEnv(old, vars)
	if bytes.Equal(old, next) {
		return false, nil
	}
	if err := write(path, next, perm); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}
