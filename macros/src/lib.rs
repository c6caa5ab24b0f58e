extern crate proc_macro;
