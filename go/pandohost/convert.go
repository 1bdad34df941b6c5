package pandohost

import (
	"errors"
	"fmt"
	"math"
)

// Helpers of the generated conversions (convert_gen.go).

func errMissing(what string) error {
	return fmt.Errorf("%s is required and was not set", what)
}

func cloneSlice[T any](v []T) []T {
	if v == nil {
		return nil
	}
	return append([]T(nil), v...)
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

func mapSlice[A, B any](v []A, f func(A) B) []B {
	if v == nil {
		return nil
	}
	out := make([]B, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

func mapSliceErr[A, B any](v []A, f func(A) (B, error)) ([]B, error) {
	if v == nil {
		return nil, nil
	}
	out := make([]B, len(v))
	for i, x := range v {
		y, err := f(x)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = y
	}
	return out, nil
}

func mapPtr[A, B any](v *A, f func(A) B) *B {
	if v == nil {
		return nil
	}
	b := f(*v)
	return &b
}

func mapPtrErr[A, B any](v *A, f func(A) (B, error)) (*B, error) {
	if v == nil {
		return nil, nil
	}
	b, err := f(*v)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

func optMsg[A, P any](v *A, f func(A) *P) *P {
	if v == nil {
		return nil
	}
	return f(*v)
}

func optFromPB[P, A any](m *P, f func(*P) (A, error)) (*A, error) {
	if m == nil {
		return nil, nil
	}
	a, err := f(m)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

var errRange = errors.New("over 65535")

func u16From(v uint32) (uint16, error) {
	if v > math.MaxUint16 {
		return 0, fmt.Errorf("%d: %w", v, errRange)
	}
	return uint16(v), nil
}
