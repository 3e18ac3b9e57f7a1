fn main() {
    let path = std::env::args().nth(1).unwrap();
    let s = kvmodel_build::load_file(std::path::Path::new(&path)).unwrap();
    println!("{}", s.render_diagnostics(false));
    if !s.has_errors() {
        println!("{}", kvmodel_build::generate(&[s]).unwrap()[0].contents);
    }
}
