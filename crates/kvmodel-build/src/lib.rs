//! YAML schema front-end of kvmodel.
