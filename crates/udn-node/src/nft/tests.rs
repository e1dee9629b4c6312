//! Rendering of every object and verb, and the builder's refusals.

use super::*;

fn table() -> TableId {
    TableId::new(Family::Inet, "ovn-kubernetes")
}

/// Every object and verb, in an order nft accepts (sets before the rules that use them);
/// `tests/isolation_nft.rs` checks this text with the real nft.
pub(crate) fn every_object_and_verb() -> Transaction {
    let mut tx = Transaction::new(table());
    let mut base = BaseChain::new(ChainType::Nat, Hook::Postrouting, Priority::SRCNAT);
    base.policy = Some(Policy::Accept);
    tx.add(Table {
        comment: Some("rules for OVN-Kubernetes".to_owned()),
    })
    .add(
        Chain::base(
            "udn-isolation",
            BaseChain::new(ChainType::Filter, Hook::Output, Priority::FILTER),
        )
        .with_comment("Host isolation for user defined networks"),
    )
    .create(Chain::base("masq-snat", base))
    .add(Chain::named("regular"))
    .add(Chain::named("commented").with_comment("a regular chain"))
    .flush(Chain::named("udn-isolation"))
    .add(Set::new("s", "ipv4_addr . inet_proto . inet_service").with_comment("open ports (IPv4)"))
    .add(Set::new("i", "ipv4_addr").with_flags([SetFlag::Interval]))
    .add(Set {
        key: KeyType::TypeOf("ip daddr . tcp dport".to_owned()),
        ..Set::new("t", "")
    })
    .add(Map::new("m", "ipv4_addr", "verdict").with_comment("jumps"))
    .add(Rule::new("udn-isolation", "ip daddr @i drop"))
    .add(Rule::new("udn-isolation", "ip daddr 10.0.0.1 accept").with_comment("one"))
    .insert(Rule::new("udn-isolation", "ct state established accept"))
    .add(Rule::new("regular", "counter"))
    .insert(Rule::new("regular", "counter accept").at(RulePosition::Index(0)))
    .add(Rule::new("regular", "counter drop").at(RulePosition::Index(0)))
    .add(Element::set(
        "s",
        vec!["10.0.0.1".to_owned(), "tcp".to_owned(), "80".to_owned()],
    ))
    .add(Element {
        comment: Some("ns/pod".to_owned()),
        ..Element::set("i", vec!["10.0.0.0/24".to_owned()])
    })
    .add(Element::map(
        "m",
        vec!["10.0.0.2".to_owned()],
        vec!["jump regular".to_owned()],
    ))
    .delete(Element::set("i", vec!["10.0.0.0/24".to_owned()]))
    .flush(Set::new("s", ""))
    .flush(Map::new("m", "", ""))
    .delete(Set::new("t", ""))
    .flush(Table::default());
    tx
}

#[test]
fn renders_every_object_and_verb() {
    insta::assert_snapshot!(every_object_and_verb().render().unwrap());
}

#[test]
fn renders_handles_and_destroy() {
    let mut tx = Transaction::new(table());
    tx.replace(Rule::new("regular", "counter drop").at(RulePosition::Handle(7)))
        .add(Rule::new("regular", "counter").at(RulePosition::Handle(7)))
        .delete(Rule::with_handle("regular", 8))
        .destroy(Rule::with_handle("regular", 9))
        .destroy(Element::set("i", vec!["10.0.1.0/24".to_owned()]))
        .destroy(Chain::named("gone"))
        .destroy(Set::new("gone", ""))
        .delete(Table::default())
        .destroy(Table::default());
    insta::assert_snapshot!(tx.render().unwrap(), @r"
    replace rule inet ovn-kubernetes regular handle 7 counter drop
    add rule inet ovn-kubernetes regular handle 7 counter
    delete rule inet ovn-kubernetes regular handle 8
    destroy rule inet ovn-kubernetes regular handle 9
    destroy element inet ovn-kubernetes i { 10.0.1.0/24 }
    destroy chain inet ovn-kubernetes gone
    destroy set inet ovn-kubernetes gone
    delete table inet ovn-kubernetes
    destroy table inet ovn-kubernetes
    ");
}

#[test]
fn add_then_delete_deletes_whether_or_not_it_exists() {
    let mut tx = Transaction::new(table());
    tx.add_then_delete(Chain::named("udn-isolation"))
        .add_then_delete(Set::new("udn-pod-default-ips-v4", "ipv4_addr"));
    assert_eq!(
        tx.render().unwrap(),
        "add chain inet ovn-kubernetes udn-isolation\n\
         delete chain inet ovn-kubernetes udn-isolation\n\
         add set inet ovn-kubernetes udn-pod-default-ips-v4 { type ipv4_addr ; }\n\
         delete set inet ovn-kubernetes udn-pod-default-ips-v4\n"
    );
}

fn refusal(object: impl Into<Object>, verb: Verb) -> String {
    let mut tx = Transaction::new(table());
    tx.push(verb, object);
    match tx.render() {
        Ok(text) => panic!("rendered {text:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn refuses_what_nft_would_misread() {
    assert_eq!(
        refusal(Rule::new("c", "accept\nflush ruleset"), Verb::Add),
        "cannot add rule \"c\": the rule has a line break or ';'"
    );
    assert_eq!(
        refusal(Rule::new("c", "accept ; flush ruleset"), Verb::Add),
        "cannot add rule \"c\": the rule has a line break or ';'"
    );
    assert_eq!(
        refusal(Rule::new("c", "  "), Verb::Add),
        "cannot add rule \"c\": the rule is empty"
    );
    assert_eq!(
        refusal(Chain::named("c").with_comment("say \"hi\""), Verb::Add),
        "cannot add chain \"c\": the comment has a double quote or a line break"
    );
    assert_eq!(
        refusal(
            Set::new("s", "ipv4_addr").with_comment("x".repeat(129)),
            Verb::Add
        ),
        "cannot add set \"s\": the comment is longer than 128 bytes"
    );
    assert_eq!(
        refusal(Chain::named("bad name"), Verb::Add),
        "cannot add chain \"bad name\": not an nft name (a letter or _, then letters, digits, _ - . /)"
    );
    assert_eq!(
        refusal(
            Element::set("s", vec!["1.1.1.1, 2.2.2.2".to_owned()]),
            Verb::Add
        ),
        "cannot add element \"s\": the key part \"1.1.1.1, 2.2.2.2\" has '{', '}' or ','"
    );
    assert_eq!(
        refusal(Element::set("s", vec![]), Verb::Delete),
        "cannot delete element \"s\": the key is empty"
    );
}

#[test]
fn refuses_verbs_an_object_does_not_take() {
    assert_eq!(
        refusal(Rule::new("c", "accept"), Verb::Replace),
        "cannot replace rule \"c\": a handle is required"
    );
    assert_eq!(
        refusal(Rule::new("c", "accept"), Verb::Delete),
        "cannot delete rule \"c\": a handle is required"
    );
    assert_eq!(
        refusal(Rule::new("c", "accept"), Verb::Flush),
        "cannot flush rule \"c\": nft has no `flush` for rules"
    );
    assert_eq!(
        refusal(Set::new("s", "ipv4_addr"), Verb::Insert),
        "cannot insert set \"s\": nft has no `insert` for sets"
    );
    assert_eq!(
        refusal(Element::set("s", vec!["1.1.1.1".to_owned()]), Verb::Flush),
        "cannot flush element \"s\": nft has no `flush` for elements"
    );
    let mut map = Map::new("m", "ipv4_addr", "verdict");
    map.value = KeyType::TypeOf("ip daddr".to_owned());
    assert_eq!(
        refusal(map, Verb::Add),
        "cannot add map \"m\": key and value must both be `type` or both `typeof`"
    );
}

#[test]
fn merging_needs_the_same_table() {
    let mut tx = Transaction::new(table());
    let mut other = Transaction::new(TableId::new(Family::Ip, "nat"));
    other.add(Table::default());
    let error = tx.extend(other).unwrap_err().to_string();
    assert_eq!(
        error,
        "cannot merge table \"ip nat\": the transaction is on table inet ovn-kubernetes"
    );
    let mut same = Transaction::new(table());
    same.flush(Chain::named("c"));
    tx.extend(same).unwrap();
    assert_eq!(tx.len(), 1);
}

#[tokio::test]
async fn recording_executor_refuses_like_nft() {
    let nft = RecordingNft::new();
    nft.fail_when(
        FailOn::Run,
        "socket cgroupv2",
        "Could not process rule: No such file or directory",
    );
    let mut tx = Transaction::new(table());
    tx.add(Table::default())
        .add(Rule::new("c", "socket cgroupv2 level 2 a/b accept"));
    let error = nft.run(&tx).await.unwrap_err();
    assert_eq!(
        error.failed_line().map(|line| line.number),
        Some(2),
        "{error}"
    );
    assert_eq!(nft.runs().len(), 1);
    nft.check(&tx).await.unwrap();
    assert_eq!(nft.checks().len(), 1);
    nft.run(&Transaction::new(table())).await.unwrap();
    assert_eq!(nft.runs().len(), 1, "an empty transaction is not sent");
    let target = ListTarget::Table(table());
    assert_eq!(nft.list(&target).await.unwrap(), None);
    nft.set_listing(&target, Some("table inet ovn-kubernetes {\n}\n".to_owned()));
    assert!(nft.list(&target).await.unwrap().is_some());
}
