// Command powershell is the fake powershell the hyperv driver's tests
// build and run in place of Windows' (see package fakehv). Its world is
// the folder named by FAKE_HYPERV_DIR.
package main

import (
	"os"

	"github.com/sandboxforge/sbf/drivers/hyperv/internal/fakehv"
)

func main() {
	os.Exit(fakehv.Main(os.Args[1:], os.Getenv("FAKE_HYPERV_DIR"), os.Stdout, os.Stderr))
}
