// Package policy is enforcerd's pure policy core.
package policy
