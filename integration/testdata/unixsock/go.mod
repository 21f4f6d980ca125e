module example.com/unixsock

go 1.22
