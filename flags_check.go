package main

import (
	"errors"
	"flag"
	"fmt"
	"lakehouse/internal/appliance"
)

// refused is nil when nothing was refused; otherwise every refusal, one
// per line, naming its flag, wrapping errUsage (exit status 2).
func refused(probs appliance.Problems) error {
	if len(probs) == 0 {
		return nil
	}
	errs := make([]error, len(probs))
	for i, p := range probs {
		errs[i] = fmt.Errorf("--%s %s", p.Setting, p.Why)
	}
	return usageError{errors.Join(errs...)}
}

// usageError is a refusal of settings: its text is the refusals', and it
// matches errUsage.
type usageError struct{ error }

func (u usageError) Unwrap() []error { return []error{u.error, errUsage} }

// setDefault changes a registered flag's value and the default its help
// shows, for commands that run with other defaults than `run` (demo).
func setDefault(fs *flag.FlagSet, name, value string) {
	if err := fs.Set(name, value); err != nil {
		panic(fmt.Sprintf("default of --%s: %v", name, err)) // a constant of this program
	}
	fs.Lookup(name).DefValue = value
}
