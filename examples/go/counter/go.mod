module handler/function

go 1.19
