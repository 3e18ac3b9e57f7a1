//! Example models for kvmodel.
