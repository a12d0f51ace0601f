package mcpserver

import "maps"

// Tools beyond SandboxForge v1's that agents use on a running sandbox
// (issue 24): guest files, ports, history, stats, resources.
func (s *Server) registerAgentTools() {
	s.registerFiles()
	s.registerPorts()
	s.registerHistory()
	s.registerStats()
	s.registerResources()
}

// Their hints join toolHints before any server registers a tool.
func init() {
	for _, h := range []map[string]hints{fileHints, portHints, {"get_history": readOnly}, statsHints} {
		maps.Copy(toolHints, h)
	}
}
