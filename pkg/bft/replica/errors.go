package replica

import "errors"

var (
	errCallTooLarge = errors.New("replica: call exceeds the size limit")
	// ErrConfig is wrapped by every configuration error.
	ErrConfig = errors.New("replica: bad configuration")
)
