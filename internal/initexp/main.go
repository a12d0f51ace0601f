package main

import (
	_ "github.com/spf13/cobra"
	_ "github.com/sandboxforge/sbf/spec"
	_ "github.com/sandboxforge/sbf/state"
	_ "github.com/sandboxforge/sbf/drivers/lima"
	_ "github.com/sandboxforge/sbf/drivers/sim"
	_ "github.com/sandboxforge/sbf/drivers/sshexec"
	_ "github.com/sandboxforge/sbf/internal/policy"
	_ "golang.org/x/term"
)

func main() {}
