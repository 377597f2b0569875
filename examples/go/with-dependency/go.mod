module handler/function

go 1.19

require github.com/google/uuid v1.3.0
