module github.com/informer-rs/informer-rs/benches/childio

go 1.26.0
