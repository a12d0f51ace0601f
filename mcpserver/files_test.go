package mcpserver

import (
	"encoding/base64"
	"strings"
	"testing"
)

// An agent reads and writes guest files without run_command: text and
// binary, pieces of a large file, listings, stat, remove, make_dir.
func TestGuestFileTools(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	w := f.ok("write_file", map[string]any{"instance_id": id, "path": "/app/main.py", "content": "print('hé')\n",
		"mode": "0755", "make_parents": true})
	if w["bytes_written"].(float64) != 13 || w["mode"] != "0755" {
		t.Fatalf("write_file: %v", w)
	}
	// The file is what a command in the guest sees (relative paths too).
	if out := f.ok("run_command", map[string]any{"instance_id": id, "command": "cat app/main.py"}); out["stdout"] !=
		"print('hé')\n" {
		t.Fatalf("the guest sees %v", out)
	}
	r := f.ok("read_file", map[string]any{"instance_id": id, "path": "/app/main.py"})
	if r["content"] != "print('hé')\n" || r["encoding"] != "utf8" || r["truncated"] != false || r["size"].(float64) != 13 {
		t.Errorf("read_file: %v", r)
	}
	// A limit that cuts "é" in two leaves it for the next read.
	r = f.ok("read_file", map[string]any{"instance_id": id, "path": "/app/main.py", "limit": 9})
	if r["content"] != "print('h" || r["next_offset"].(float64) != 8 || r["truncated"] != true {
		t.Errorf("read_file cut in a character: %v", r)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	f.ok("write_file", map[string]any{"instance_id": id, "path": "/app/blob", "encoding": "base64",
		"content": base64.StdEncoding.EncodeToString(bin)})
	r = f.ok("read_file", map[string]any{"instance_id": id, "path": "/app/blob"})
	if r["encoding"] != "base64" || r["content"] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("binary read: %v", r)
	}
	f.fails("read_file", map[string]any{"instance_id": id, "path": "/app/blob", "encoding": "utf8"},
		"INVALID_ARGUMENTS")
	f.fails("read_file", map[string]any{"instance_id": id, "path": "/app/none"}, "GUEST_PATH_NOT_FOUND")
	f.fails("write_file", map[string]any{"instance_id": id, "path": "/x", "content": "!", "encoding": "base64"},
		"INVALID_ARGUMENTS")
	f.fails("write_file", map[string]any{"instance_id": id, "path": "/x", "content": "", "mode": "999"},
		"INVALID_ARGUMENTS")
	if d := f.ok("make_dir", map[string]any{"instance_id": id, "path": "/app/data/cache"}); d["created"] != true {
		t.Errorf("make_dir: %v", d)
	}
	l := f.ok("list_files", map[string]any{"instance_id": id, "path": "/app"})
	var names []string
	for _, e := range l["entries"].([]any) {
		names = append(names, e.(map[string]any)["path"].(string))
	}
	if strings.Join(names, " ") != "blob data main.py" || l["truncated"] != false {
		t.Errorf("list_files: %v", l)
	}
	if l := f.ok("list_files", map[string]any{"instance_id": id, "path": "/app", "recursive": true,
		"limit": 2}); l["count"].(float64) != 2 || l["truncated"] != true {
		t.Errorf("capped recursive list_files: %v", l)
	}
	st := f.ok("stat_path", map[string]any{"instance_id": id, "path": "/app/main.py"})
	if st["exists"] != true || st["type"] != "file" || st["mode"] != "0755" || st["size"].(float64) != 13 {
		t.Errorf("stat_path: %v", st)
	}
	f.fails("remove_path", map[string]any{"instance_id": id, "path": "/app"}, "GUEST_DIRECTORY_NOT_EMPTY")
	if rm := f.ok("remove_path", map[string]any{"instance_id": id, "path": "/app", "recursive": true}); rm["removed"] !=
		true {
		t.Errorf("remove_path: %v", rm)
	}
	if st := f.ok("stat_path", map[string]any{"instance_id": id, "path": "/app"}); st["exists"] != false {
		t.Errorf("stat_path after remove: %v", st)
	}
	f.fails("read_file", map[string]any{"instance_id": "inst_nope", "path": "/x"}, "INSTANCE_NOT_FOUND")
}
