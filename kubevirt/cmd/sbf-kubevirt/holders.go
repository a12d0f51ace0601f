package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// holders lists who holds which sbf VM in a namespace, from the VM objects themselves (their
// created-by, labels and lease annotation): what every teammate's sbf sees, whoever made them.
func holders(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("holders", flag.ContinueOnError)
	namespace := fs.String("namespace", os.Getenv("SBF_KUBEVIRT_NAMESPACE"),
		"the VMs' namespace (default SBF_KUBEVIRT_NAMESPACE, else the kubeconfig context's)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *namespace == "" {
		*namespace = driver.ContextNamespace(os.Getenv)
	}
	if *namespace == "" {
		return errors.New("holders: no namespace: pass --namespace, set SBF_KUBEVIRT_NAMESPACE, " +
			"or name one in the kubeconfig's context")
	}
	cfg, _, err := driver.RESTConfig(os.Getenv)
	if err != nil {
		return err
	}
	c, err := driver.NewClient(cfg)
	if err != nil {
		return err
	}
	h, err := driver.HoldingsIn(ctx, c, *namespace)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	}
	ceilings := "no per-owner ceiling"
	if !h.None() {
		ceilings = "per owner at most " + h.OwnerCeilings.String()
	}
	fmt.Fprintf(out, "namespace %s: %d sbf VMs, %s\n", h.Namespace, len(h.VMs), ceilings)
	for _, owner := range slices.Sorted(maps.Keys(h.Exceptions)) {
		fmt.Fprintf(out, "  %s: at most %s\n", owner, h.Exceptions[owner])
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OWNER\tHOLDS\tCPUS\tMEMORY\tVM\tWORKSPACE\tSANDBOX\tSTATUS\tLEASE ENDS")
	for _, v := range h.VMs {
		owner := v.Owner
		if owner == "" {
			owner = "(unnamed)"
		}
		use := h.UseByOwner[v.Owner]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", owner, use.VMs, use.CPUs,
			resource.NewQuantity(use.MemoryBytes, resource.BinarySI), v.VM, v.WorkspaceTag, v.Sandbox, v.Status,
			v.LeaseEnd)
	}
	return tw.Flush()
}
