//! Shared test code: the store-independent behaviour suite and a fault-injecting store.
#![allow(dead_code)]

pub mod behaviour;
pub mod faulty;
