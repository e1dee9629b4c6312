//! UDN/CUDN -> NAD render.
