package cli

import (
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlags adds the hidden --cpuprofile and --memprofile flags to
// cmd: profiles of the run for `go tool pprof`. The engine labels its
// samples with its stage (go tool pprof -tagfocus stage=load; see
// docs/bench.md).
func addProfileFlags(cmd *cobra.Command) {
	var cpu, mem string
	cmd.Flags().StringVar(&cpu, "cpuprofile", "", "write a CPU profile to `FILE`")
	cmd.Flags().StringVar(&mem, "memprofile", "", "write a heap profile to `FILE` at the end")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	_ = cmd.Flags().MarkHidden("memprofile")
	inner := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) (err error) {
		if cpu != "" {
			f, err := os.Create(cpu)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return err
			}
			defer func() {
				pprof.StopCPUProfile()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}()
		}
		err = inner(c, args)
		if mem != "" {
			f, ferr := os.Create(mem)
			if ferr != nil {
				return ferr
			}
			runtime.GC()
			werr := pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if err == nil {
				err = werr
			}
		}
		return err
	}
}
