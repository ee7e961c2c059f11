// JPEG marker walk up to the first scan, and the EXIF Orientation tag it finds. Every read is bounds
// checked: the input is any bytes (it is fuzzed), and real files carry truncated APP1 segments,
// hex-edited TIFF headers, several APP1 segments, junk between markers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace yc {

struct JpegMarkers {
  // EXIF Orientation of the FIRST "Exif" APP1 segment (as Pillow and OpenCV read it): 1..8, and 1 when
  // absent, out of range (0, 9+), or unparseable.
  int orientation = 1;
  bool has_soi = false;       // starts with FF D8
  bool reached_sos = false;   // a start-of-scan marker was found
  size_t sos_offset = 0;      // offset of that FF DA marker (valid when reached_sos)
  bool ran_out = false;       // the data ended inside the header segments (before any scan)
};

JpegMarkers ScanJpegMarkers(const uint8_t* data, size_t size);

// Shorthand for ScanJpegMarkers(...).orientation.
int JpegExifOrientation(const uint8_t* data, size_t size);

// Reads a SHORT or LONG tag (first value) from IFD0 of a TIFF structure ("II*\0" / "MM\0*" header),
// such as an EXIF block or a .tif file. False when the header, the IFD or the entry is malformed,
// out of bounds, or the tag is absent.
bool ReadTiffIfd0Tag(const uint8_t* tiff, size_t size, uint16_t tag, uint32_t* value);

// True when an EOI marker (FF D9) occurs after `from` (e.g. the first scan): entropy-coded data stuffs
// every FF with 00, so an FF D9 there is a real marker. Used to tell a complete image from a cut one
// when the decoder's warning is about something else.
bool JpegHasEoiAfter(const uint8_t* data, size_t size, size_t from);

}  // namespace yc
