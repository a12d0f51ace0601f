package cli

// commandExamples are the Examples of help and man pages for the commands
// that set none where they are built, by command path (without "sbf ").
// A test checks every visible command has some.
var commandExamples = map[string]string{
	"sbf": "  sbf init && sbf apply          # declare a sandbox, then boot it\n" +
		"  sbf exec -- uname -a           # run a command in it\n" +
		"  sbf status                     # what runs, and when its lease ends\n" +
		"  sbf destroy                    # delete it",
	"apply": "  sbf apply                      # plan, ask, converge\n" +
		"  sbf apply --auto-approve --target api\n" +
		"  sbf plan --out plan.json && sbf apply plan.json",
	"cat":   "  sbf cat api:/etc/os-release\n  sbf cat /var/log/app.log --offset 1024 --limit 4096",
	"clone": "  sbf clone api api-copy\n  sbf clone api api-before --snapshot before-upgrade --ttl 2h",
	"fork":  "  sbf fork api\n  sbf fork api --count 4 --name-prefix try --ttl 1h",
	"destroy": "  sbf destroy                    # every sandbox of the workspace, after asking\n" +
		"  sbf destroy api --auto-approve",
	"doctor":       "  sbf doctor\n  sbf doctor --only image --json",
	"egress":       "  sbf egress log api",
	"egress log":   "  sbf egress log api\n  sbf egress log api -n 200 --json",
	"exec":         "  sbf exec -- ls /work\n  sbf exec api -- make test\n  sbf exec -it api -- bash",
	"extend":       "  sbf extend api 2h",
	"health":       "  sbf health\n  sbf health --json",
	"history":      "  sbf history\n  sbf history api --limit 0 --json",
	"image":        "  sbf image list\n  sbf image build",
	"image build":  "  sbf image build\n  sbf image build --out /var/cache/sandboxforge/images",
	"image list":   "  sbf image list\n  sbf image list --json",
	"import-v1":    "  sbf import-v1 --dry-run\n  sbf import-v1 --db state/leases.db --delete-leaked",
	"init":         "  sbf init\n  sbf init --driver lima",
	"ls":           "  sbf ls api:/var/log\n  sbf ls -lR api:/work\n  sbf ls api:              # the guest's home folder",
	"mcp":          "  sbf mcp                        # MCP over stdio, for an agent\n  sbf mcp --http 127.0.0.1:8765",
	"plan":         "  sbf plan\n  sbf plan --detailed-exitcode --json\n  sbf plan --out plan.json",
	"pool":         "  sbf pool status\n  sbf pool fill",
	"pool drain":   "  sbf pool drain",
	"pool fill":    "  sbf pool fill",
	"pool status":  "  sbf pool status --json",
	"port-forward": "  sbf port-forward api 8080\n  sbf port-forward api 9000:80 5432",
	"reconcile":    "  sbf reconcile\n  sbf reconcile --watch --interval 30s",
	"schema":       "  sbf schema > sandboxforge.schema.json\n  sbf schema --write .vscode/sandboxforge.schema.json",
	"serve":        "  sbf serve --loop-only\n  sbf serve 127.0.0.1:8765 --token-file ~/.config/sbf/token",
	"service":      "  sbf service install\n  sbf service status\n  sbf service uninstall",
	"service install": "  sbf service install\n  sbf service install ~/src/app ~/src/api\n" +
		"  sbf service install --dry-run",
	"service uninstall": "  sbf service uninstall",
	"shell":             "  sbf shell\n  sbf shell api",
	"snapshot":          "  sbf snapshot create api before-upgrade\n  sbf snapshot restore api before-upgrade",
	"snapshot create":   "  sbf snapshot create api before-upgrade",
	"snapshot delete":   "  sbf snapshot delete api before-upgrade",
	"snapshot export":   "  sbf snapshot export api before-upgrade ./api-before-upgrade.tar",
	"snapshot import":   "  sbf snapshot import api before-upgrade ./api-before-upgrade.tar",
	"snapshot list":     "  sbf snapshot list api\n  sbf snapshot list api --json",
	"snapshot restore":  "  sbf snapshot restore api before-upgrade",
	"stats":             "  sbf stats\n  sbf stats api --json",
	"status":            "  sbf status\n  sbf status --all\n  sbf status --json",
	"task":              "  sbf task start api -- make build\n  sbf task list\n  sbf task logs TASK",
	"task list":         "  sbf task list\n  sbf task list --json",
	"task logs":         "  sbf task logs 3db25a1c\n  sbf task logs 3db25a1c --tail 50",
	"task start":        "  sbf task start api -- make build\n  sbf task start api --cwd /work --env CI=1 -- ./test.sh",
	"task status":       "  sbf task status 3db25a1c --json",
	"task stop":         "  sbf task stop 3db25a1c",
	"validate":          "  sbf validate\n  sbf validate --strict --show\n  sbf validate --set vm.cpus=4 --json",
	"version":           "  sbf version\n  sbf version --json",
	"docs":              "  sbf docs man ./man",
	"docs man":          "  sbf docs man ./man\n  sbf docs man /usr/local/share/man/man1",
}
