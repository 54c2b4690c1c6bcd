module example.com

go 1.25
