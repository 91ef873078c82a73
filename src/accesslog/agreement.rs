//! Agreement with the gateway (DESIGN §8).
