use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    generate_c_header();
}

/// Generates the C header from `src/ffi` into `OUT_DIR/zooid.h` and tells the tests where it is
/// (`ZOOID_GENERATED_HEADER`); `tests/c/abi.rs` compares it with the committed
/// `include/zooid.h`. The source tree is never written to.
fn generate_c_header() {
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo")).join("zooid.h");
    let generated = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .map_err(|e| e.to_string())
        .and_then(|config| {
            cbindgen::Builder::new()
                .with_config(config)
                // Only the C binding: other bindings' exports (JNI) stay out of the header.
                .with_src(crate_dir.join("src/ffi/mod.rs"))
                .generate()
                .map_err(|e| e.to_string())
        });
    match generated {
        Ok(bindings) => {
            bindings.write_to_file(&out);
        }
        Err(why) => {
            // Do not break the Rust build over the header; the header test reports it.
            println!("cargo:warning=cbindgen could not generate the C header: {why}");
            let _ = std::fs::write(&out, format!("#error \"cbindgen failed: {why}\"\n"));
        }
    }
    println!("cargo:rustc-env=ZOOID_GENERATED_HEADER={}", out.display());
}
