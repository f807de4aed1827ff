package main

import (
	"flag"
	"fmt"

	"tessera/internal/placement"
)

// siteFlag is --site, on `tessera blockd`, `meta`, `mount` and `up`: the
// site (failure domain and WAN locality) the process runs in.
type siteFlag struct{ s *string }

func addSiteFlag(fs *flag.FlagSet, what string) siteFlag {
	return siteFlag{fs.String("site", "", what)}
}

// value returns the site ("" for none), or a usage error naming what is
// wrong with it.
func (f siteFlag) value() (string, error) {
	if *f.s == "" {
		return "", nil
	}
	if err := placement.CheckSite(*f.s); err != nil {
		return "", fmt.Errorf("%w: --site: %w", errUsage, err)
	}
	return *f.s, nil
}
