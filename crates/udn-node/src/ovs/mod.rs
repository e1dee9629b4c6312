//! OVS's own database (Open_vSwitch, bridges, ports, interfaces) through udn-ovsdb.
