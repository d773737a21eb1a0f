module github.com/enforcerd/enforcerd

go 1.26
