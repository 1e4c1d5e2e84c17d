package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Provenance is what every JSON report says of how it was made: the build,
// the exact configuration and the machine.
type Provenance struct {
	// Version is the build's version line (`augustus version`).
	Version string `json:"version"`
	// Config holds every flag's value, defaults included; FlagsSet names
	// the flags given on the command line.
	Config   map[string]string `json:"config,omitempty"`
	FlagsSet []string          `json:"flags_set,omitempty"`
	Machine  Machine           `json:"machine"`
}

// Machine describes the machine bench ran on.
type Machine struct {
	CPUModel   string `json:"cpu_model"`
	Cores      int    `json:"cores"`
	GoMaxProcs int    `json:"gomaxprocs"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	GoVersion  string `json:"go_version"`
}

func provenance(o *Options, h Host) Provenance {
	return Provenance{Version: h.Version, Config: configOf(o), FlagsSet: changedFlags(o), Machine: thisMachine()}
}

// thisMachine describes this machine (what it cannot read is left empty).
func thisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoMaxProcs: runtime.GOMAXPROCS(0), OS: runtime.GOOS, Arch: runtime.GOARCH,
		GoVersion: runtime.Version(), CPUModel: cpuModel()}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo ("" elsewhere).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// String is the report's machine row.
func (m Machine) String() string {
	s := ""
	if m.CPUModel != "" {
		s = m.CPUModel + ", "
	}
	s += strings.Join([]string{strconv.Itoa(m.Cores) + " CPUs", "GOMAXPROCS " + strconv.Itoa(m.GoMaxProcs), m.GoVersion, m.OS + "/" + m.Arch}, ", ")
	if m.Kernel != "" {
		s += ", kernel " + m.Kernel
	}
	return s
}
