//! docs/FORMAT.md, "A Cannyls storage in a minfs file", and the code agree: the copy trailer's
//! field table, its magic and constants (`cannyls_adapter::copy`).

use cannyls_adapter::copy::{
    CopyState, Trailer, MIN_DISTANCE, TRAILER_FIELDS, TRAILER_LEN, TRAILER_MAGIC, TRAILER_VERSION,
};

fn section() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMAT.md");
    let doc = std::fs::read_to_string(path).expect("docs/FORMAT.md is readable");
    let start = doc
        .find("## A Cannyls storage in a minfs file")
        .expect("FORMAT.md has the section");
    doc[start..].to_string()
}

#[test]
fn the_trailer_table_matches_the_code() {
    let s = section();
    let rows = testutil::markdown_table_after(&s, "### Copy trailer");
    let doc: Vec<(usize, usize, String)> = rows
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap(), r[2].clone()))
        .collect();
    let code: Vec<(usize, usize, String)> = TRAILER_FIELDS
        .iter()
        .map(|(n, o, l)| (*o, *l, n.to_string()))
        .collect();
    assert_eq!(
        doc, code,
        "the copy trailer table of FORMAT.md differs from the code"
    );
    assert!(s.contains(&format!(
        "`{}`",
        std::str::from_utf8(&TRAILER_MAGIC).unwrap()
    )));
    let consts = testutil::markdown_table_after(&s, "| constant | value |");
    let doc: Vec<(String, u64)> = consts
        .iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect();
    assert_eq!(
        doc,
        vec![
            ("TRAILER_LEN".to_string(), TRAILER_LEN as u64),
            ("TRAILER_VERSION".to_string(), u64::from(TRAILER_VERSION)),
            ("MIN_DISTANCE".to_string(), MIN_DISTANCE),
        ]
    );
}

/// The encoding puts each field where the table says.
#[test]
fn the_encoding_follows_the_table() {
    let t = Trailer {
        state: CopyState::Valid,
        block_size: 4096,
        uuid: [0xab; 16],
        image: 0x0102_0304_0506_0708,
        len: 0x1112_1314_1516_1718,
        generation: 0x2122_2324_2526_2728,
        clean: Some((0x3132_3334_3536_3738, 0x4142_4344_4546_4748)),
    };
    let b = t.encode();
    let field = |name: &str| {
        let (_, o, l) = TRAILER_FIELDS.iter().find(|f| f.0 == name).unwrap();
        &b[*o..o + l]
    };
    assert_eq!(field("magic"), &TRAILER_MAGIC);
    assert_eq!(field("version"), &TRAILER_VERSION.to_be_bytes());
    assert_eq!(field("state"), &[1]);
    assert_eq!(field("clean"), &[1]);
    assert_eq!(field("block_size"), &4096u16.to_be_bytes());
    assert_eq!(field("instance_uuid"), &[0xab; 16]);
    assert_eq!(field("image_offset"), &t.image.to_be_bytes());
    assert_eq!(field("image_len"), &t.len.to_be_bytes());
    assert_eq!(field("generation"), &t.generation.to_be_bytes());
    assert_eq!(field("clean_head"), &0x3132_3334_3536_3738u64.to_be_bytes());
    assert_eq!(field("clean_end"), &0x4142_4344_4546_4748u64.to_be_bytes());
    assert_eq!(field("crc32c"), &crc32c::crc32c(&b[..124]).to_be_bytes());
}
