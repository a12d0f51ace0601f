package guest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/sandboxforge/sbf/spec"
)

// ServicesProjectName is the compose project holding a sandbox's services.
func ServicesProjectName(sandbox string) string { return ProjectName(sandbox) + "-services" }

// ServicesProject generates the compose project that runs a sandbox's
// MySQL and Redis, from the v1 [infra] keys: named containers on the
// sandbox's network, with health checks the readiness wait also uses.
func ServicesProject(
	infra spec.Infra,
	sandbox string,
	services []string,
	getenv func(string) string,
) (*Project, error) {
	svcs := map[string]any{}
	for _, name := range services {
		switch name {
		case "mysql":
			pw, err := Expand(infra.MySQL.RootPassword.Reveal(), "infra.mysql.root_password", getenv)
			if err != nil {
				return nil, err
			}
			env := map[string]string{"MYSQL_ROOT_PASSWORD": pw, "MYSQL_DATABASE": infra.MySQL.Database}
			for k, v := range infra.MySQL.ExtraEnv.Reveal() {
				env[k] = v
			}
			svcs["mysql"] = service(infra.MySQL.Image, MySQLContainer(infra, sandbox), env,
				[]string{"CMD-SHELL", `MYSQL_PWD="$$MYSQL_ROOT_PASSWORD" mysqladmin ping -h 127.0.0.1 -uroot --silent`})
		case "redis":
			svcs["redis"] = service(infra.Redis.Image, RedisContainer(infra, sandbox), infra.Redis.ExtraEnv.Reveal(),
				[]string{"CMD-SHELL", "redis-cli ping | grep -q PONG"})
		default:
			return nil, fmt.Errorf("unknown service %q", name)
		}
	}
	doc := map[string]any{
		"name":     ServicesProjectName(sandbox),
		"services": svcs,
		"networks": map[string]any{"services": map[string]any{"name": NetworkName(infra, sandbox)}},
	}
	resolved, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	p := &Project{Name: ServicesProjectName(sandbox), Resolved: resolved, Services: map[string]string{}}
	names := make([]string, 0, len(svcs))
	for n := range svcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, _ := yaml.Marshal(svcs[n])
		p.Services[n] = HashBytes(b)
	}
	sum := sha256.Sum256(resolved)
	p.Bundle = hex.EncodeToString(sum[:])[:16]
	return p, nil
}

func service(image, container string, env map[string]string, health []string) map[string]any {
	s := map[string]any{
		"image":          image,
		"container_name": container,
		"restart":        "unless-stopped",
		"networks":       []string{"services"},
		"healthcheck":    map[string]any{"test": health, "interval": "2s", "timeout": "5s", "retries": 45},
	}
	if len(env) > 0 {
		s["environment"] = env
	}
	return s
}
