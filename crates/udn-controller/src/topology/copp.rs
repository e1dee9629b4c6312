//! The zone's control plane protection (upstream `EnsureDefaultCOPP`, `copp.go`) and the
//! `acl-logging` meter (`ControllerManager.createACLLoggingMeter`): rows of the default
//! network's cluster unit; every other network's routers refer to the COPP by UUID.

use udn_ovsdb::engine::{DesiredRow, RowRef};
use udn_ovsdb::nb::{copp, meter, meter_band};

use super::acl::ACL_LOGGING_METER;
use super::context::NetCtx;
use super::desired::Rows;

/// The COPP's name (`types.DefaultCOPPName`).
pub const DEFAULT_COPP: &str = "ovnkube-default";

/// The protocols every gateway router rate-limits (`defaultProtocolNames`), each with a
/// meter `<protocol>-rate-limiter`.
const PROTOCOLS: [&str; 9] = [
    "arp",
    "arp-resolve",
    "bfd",
    "event-elb",
    "icmp4-error",
    "icmp6-error",
    "reject",
    "tcp-reset",
    "svc-monitor",
];

/// The rate (packets per second) of every COPP meter (hard-coded upstream).
const COPP_RATE: i64 = 25;

/// The COPP, its nine meters sharing one band, and the `acl-logging` meter.
pub(crate) fn rows(ctx: &NetCtx<'_>, rows: &mut Rows) {
    let copp_band = rows.add(band("copp-rate-limiter", COPP_RATE));
    let mut meters = Vec::new();
    for protocol in PROTOCOLS {
        let name = format!("{protocol}-rate-limiter");
        rows.add(meter_row(&name, copp_band.clone()));
        meters.push((protocol, name));
    }
    let mut copp_row = DesiredRow::new(copp::TABLE, DEFAULT_COPP)
        .string(copp::NAME, DEFAULT_COPP)
        .value(copp::METERS, super::columns::string_map(meters));
    // Inserted with the UUID the other networks' routers are planned with (ahead of it).
    if let Some(uuid) = ctx.zone.copp {
        copp_row = copp_row.insert_uuid(uuid);
    }
    rows.add(copp_row);
    let logging_band = rows.add(band(
        ACL_LOGGING_METER,
        i64::from(ctx.zone.acl_logging_rate_limit),
    ));
    rows.add(meter_row(ACL_LOGGING_METER, logging_band));
}

fn band(id: &str, rate: i64) -> DesiredRow {
    DesiredRow::new(meter_band::TABLE, format!("meter-band:{id}"))
        .string(meter_band::ACTION, "drop")
        .integer(meter_band::RATE, rate)
}

fn meter_row(name: &str, band: RowRef) -> DesiredRow {
    DesiredRow::new(meter::TABLE, name)
        .string(meter::NAME, name)
        .boolean(meter::FAIR, true)
        .string(meter::UNIT, "pktps")
        .refs(meter::BANDS, [band])
}
