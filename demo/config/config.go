// Package config reads the demo application's settings from the
// environment.
package config

import (
	"os"
	"path/filepath"
	"strings"
)

// Config is the application's configuration.
type Config struct {
	Mode  string
	Hosts []string
}

// Load reads the configuration from the environment: APP_MODE ("dev" by
// default) and APP_HOSTS, a comma-separated list.
func Load() Config {
	c := Config{Mode: os.Getenv("APP_MODE"), Hosts: SplitHosts(os.Getenv("APP_HOSTS"))}
	if c.Mode == "" {
		c.Mode = "dev"
	}
	return c
}

// SplitHosts splits a comma-separated host list, dropping empty entries.
func SplitHosts(s string) []string {
	var hosts []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// Dir returns the directory of the application's configuration files,
// under the user's configuration directory.
func Dir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "app"), nil
}
